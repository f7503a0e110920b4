"""Shared helpers and fixtures for the Chat Completions family tests."""
