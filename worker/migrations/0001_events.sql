-- Events with their remaining tickets. `fence` is the highest fencing token that has
-- written the row: fenced writes are refused for any lower token.
CREATE TABLE IF NOT EXISTS events (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  stock INTEGER NOT NULL,
  remaining INTEGER NOT NULL,
  fence INTEGER NOT NULL DEFAULT 0
);
