"""A ReAct-style LangGraph agent with one tool and a fake chat model (no network), shared by the
LangGraph tests and ``bench/langgraph_bench.py``.

The model is langchain_core's ``GenericFakeChatModel``; what it answers is a function of the
conversation so far, so the same turns give the same messages (ids included) on any saver and
after a resume in another process. Each turn is: the user asks about a city, the model calls
``get_weather``, the tool answers, the model replies in text. A turn's texts are a few hundred
characters, as in a real chat.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    ToolMessage,
    messages_to_dict,
)
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

CITIES = ["Lisbon", "Oslo", "Nairobi", "Lima", "Osaka", "Perth", "Quito", "Tunis", "Hanoi"]


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


def get_weather(city: str) -> str:
    """The tool: a deterministic forecast for ``city``."""
    degrees = sum(map(ord, city)) % 35
    return (
        f"Forecast for {city}: {degrees} degrees Celsius, wind 12 km/h from the north-west, "
        f"humidity 64%, visibility 10 km; light rain expected in the late afternoon."
    )


def _answer(messages: list[AnyMessage]) -> AIMessage:
    last = messages[-1]
    n = sum(isinstance(m, HumanMessage) for m in messages)
    if isinstance(last, HumanMessage):
        city = CITIES[n % len(CITIES)]
        return AIMessage(
            content=f"Let me look up the weather in {city} for you.",
            id=f"ai-{n}-call",
            tool_calls=[
                {"id": f"call_{n:04d}", "name": "get_weather", "args": {"city": city}},
            ],
        )
    assert isinstance(last, ToolMessage)
    return AIMessage(
        content=(
            f"Here is what I found: {last.content} If you are heading out, an umbrella and a "
            "light jacket should do; the rain should clear by the evening."
        ),
        id=f"ai-{n}-reply",
    )


async def agent(state: AgentState) -> dict[str, Any]:
    """Ask the fake model for the next message."""
    model = GenericFakeChatModel(messages=iter([_answer(state["messages"])]))
    reply = await model.ainvoke(state["messages"])
    return {"messages": [reply], "turns": state.get("turns", 0) + 1}


async def tools(state: AgentState) -> dict[str, Any]:
    """Run the calls of the last AI message."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    return {
        "messages": [
            ToolMessage(
                content=get_weather(**call["args"]),
                tool_call_id=call["id"],
                name=call["name"],
                id=f"tool-{call['id']}",
            )
            for call in last.tool_calls
        ]
    }


def _route(state: AgentState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def build(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent graph, compiled with ``checkpointer``."""
    graph = StateGraph(AgentState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", _route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def question(turn: int) -> HumanMessage:
    """The user's message of ``turn``."""
    city = CITIES[turn % len(CITIES)]
    return HumanMessage(
        content=f"Turn {turn}: what is the weather like in {city} today, and do I need a coat?",
        id=f"human-{turn}",
    )


def config(thread_id: str) -> dict[str, Any]:
    """The run config of ``thread_id``."""
    return {"configurable": {"thread_id": thread_id}}


def snapshot_json(state: Any) -> dict[str, Any]:
    """What two savers' ``aget_state`` must agree on, as JSON: the values (messages by
    ``message_to_dict``), the next nodes, the metadata and the pending tasks' names.

    Checkpoint ids and timestamps are minted per run and are left out.
    """
    values = dict(state.values)
    values["messages"] = messages_to_dict(values.get("messages", []))
    return {
        "values": values,
        "next": list(state.next),
        "metadata": dict(state.metadata or {}),
        "tasks": [task.name for task in state.tasks],
    }


def snapshot(state: Any) -> tuple[Any, ...]:
    """`snapshot_json` as Python values (messages compared by ``==``), cheaper to compare."""
    return (state.values, state.next, state.metadata, [task.name for task in state.tasks])
