"""Provider-neutral planning of a transcript for one render target."""
