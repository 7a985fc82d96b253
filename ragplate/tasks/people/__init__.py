"""People: accounts, API tokens and who a request's token belongs to."""
