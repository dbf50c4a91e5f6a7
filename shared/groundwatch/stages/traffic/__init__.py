"""The traffic stage: users' questions grounded in the semantic groups of a dataset."""
