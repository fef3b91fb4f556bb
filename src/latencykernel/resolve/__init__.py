"""Resolution: everything about a deployment decided once, before any step is priced."""
