"""One module per provider wire format: `parse` (wire -> canonical) and `encode` (plan -> wire)."""
