"""History moves: pop, truncate, switch, fork, and the tool-call lifecycles they settle.

- ``history_methods``: `ConversationStore`'s methods that change a history other than by
  appending to it (pop, truncate, fork, branches, cancel, compact).
- ``branches``: undo, fork and switching branches; the lifecycles a moved head settles.
- ``lifecycle``: the tool-call state machine, as pure functions: every lifecycle rule, for the
  append, the history moves and the loads alike.
"""
