"""CRUD over application entities: permission and row-level ACL decided at each call,
approvals for moderated entities (:mod:`.service`)."""
