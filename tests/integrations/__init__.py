"""Tests of convstore.integrations."""
