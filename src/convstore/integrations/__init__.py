"""Integrations: convstore as the history store of agent and chat frameworks.

One module per framework. Each maps the framework's own records onto canonical parts (so tool
lifecycles, `ConversationStore.render` and blobs work as for any conversation), keeps the
framework's record as a `NativeRecord` where it must come back exactly, calls only the public
store API, and imports its framework only inside its own module (an optional extra):

- `convstore.integrations.openai_agents`: ``ConvstoreSession``, an openai-agents ``Session``
  (``pip install convstore[openai-agents]``).
- `convstore.integrations.ai_sdk`: ``to_ui_messages`` / ``from_ui_messages``, the AI SDK's
  UIMessage JSON (no dependency).
- `convstore.integrations.pydantic_ai`: ``ConvstoreConversationStore``, a pydantic-ai
  ``ConversationStore`` backend (``pip install convstore[pydantic-ai]``).
- `convstore.integrations.google_adk`: ``ConvstoreSessionService``, a google-adk
  ``BaseSessionService`` (``pip install convstore[google-adk]``).
- `convstore.integrations.langgraph`: ``ConvstoreSaver``, a LangGraph checkpointer whose message
  channels are the thread's conversation (``pip install convstore[langgraph]``).
- `convstore.integrations.langchain`: ``ConvstoreChatMessageHistory``, a LangChain chat message
  history (``pip install convstore[langchain]``).

Their private helpers: ``_native_record`` (a framework's record kept beside the canonical
messages) and ``_native_blobs`` (inline bytes moved out of it and back), ``_store_handle`` (the
store an integration writes to), and per framework ``_openai_agents_items`` /
``_openai_agents_reads``, ``_ai_sdk_from_ui`` / ``_ai_sdk_keys``, ``_pydantic_ai_parts``,
``_adk_parts`` / ``_adk_state``, ``_langchain_messages`` (LangChain and LangGraph), and
``_langgraph_thread`` / ``_langgraph_async_only``.
"""
