"""Who may read and write: admin sessions, bearer tokens, the auth proxy, CSRF, agents."""
