"""What exists: settings, profiles, documents, policies and the SQL schema. No I/O."""
