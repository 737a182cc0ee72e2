"""The shared store: a PostgreSQL server, for several processes on several hosts
(`engine.store.postgres.store.store.PostgresStore`)."""
