"""Maintenance: garbage collection, consistency checks, and deleting by policy.

- ``garbage``: blob garbage collection and its marking protocol, ``fsck``, and recording where
  the blobs live (``convstore gc``, ``convstore fsck``).
- ``released_blobs``: blobs an erase released, deleted by the next gc whatever their age.
- ``retention_methods``: `ConversationStore`'s methods that delete by policy (erase a tenant,
  prune by age).
- ``_erase``: every row of a tenant deleted in one transaction (``erase_tenant``).
- ``_prune``: conversations nobody wrote to within a period, deleted.
"""
