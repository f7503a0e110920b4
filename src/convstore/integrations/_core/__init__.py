"""What every integration shares, with no framework: the store it writes to, native records.

Private to `convstore.integrations` (the underscore): each integration's package imports it,
nothing else does. It imports no framework, so it works (and is tested) whichever extras are
installed.

- `store_handle`: the store an integration writes to, handed in (``store=``) or one shared per
  URL (``url=``), also as a blocking store on a background loop thread.
- `native_record`: a framework's own record of a message kept beside the canonical messages, and
  read back exactly.
- `native_blobs`: inline bytes in a native record moved out to blobs and put back on read.
- `role_runs`: a framework record whose parts change role, as one message per run of one role.
"""
