"""Integrations: convstore as the history store of agent and chat frameworks.

One package per framework. Each maps the framework's own records onto canonical parts (so tool
lifecycles, `ConversationStore.render` and blobs work as for any conversation), keeps the
framework's record as a `NativeRecord` where it must come back exactly, calls only the public
store API, and imports its framework only inside its own package (an optional extra); its
``__init__`` holds the public names, its private helpers (``_x``) sit beside it:

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
  history (``pip install convstore[langchain]``); its ``messages`` module (LangChain messages
  ⇄ canonical) is LangGraph's too.
- `convstore.integrations._core`: what they share and no framework: the store handle, native
  records and the bytes cut out of them.
"""
