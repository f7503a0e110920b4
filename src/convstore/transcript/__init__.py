"""Provider-neutral planning of a transcript for one render target.

- ``plan``: the provider-neutral transcript (`Plan`) that encoders turn into wire JSON.
- ``planner``: any stored history to a `Plan` every encoder can map without repairs.
- ``pairing``: which stored result answers each tool call, found before a turn is built.
- ``compaction``: a compaction record applied without splitting a call from its result.
- ``window``: the newest ``last=N`` messages, cut so a provider accepts them.
- ``reasoning``: which reasoning goes back to which target, and in what form.
- ``media_placement``: where each file goes, decided from the capabilities table.
- ``id_projection``: canonical tool-call ids and tool names projected onto a target's rules.
- ``diagnostics``: the record of every repair and projection a render made.
"""
