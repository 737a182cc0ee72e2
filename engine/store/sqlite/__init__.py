"""The embedded store: one SQLite file in WAL mode (`engine.store.sqlite.store.store.SQLiteStore`)."""
