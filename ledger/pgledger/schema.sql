-- schema.sql creates the PostgreSQL ledger's one table. Migrate runs it in
-- one transaction under an advisory lock, with the placeholders in double
-- braces replaced by the quoted, schema-qualified table name and by the
-- quoted index names (indexes live in the table's schema). Placeholders
-- never appear in comments: a name holding a newline would end the comment
-- there. Every statement is idempotent, so running it again is harmless.

CREATE TABLE IF NOT EXISTS {{table}} (
  -- id is ledger.Key.ID, the hex SHA-256 of the length-prefixed tenant,
  -- operation and key: the action's identity. Its primary key is the
  -- unique constraint every creation is decided on (INSERT ... ON
  -- CONFLICT (id) DO NOTHING), so two owners can never both create an
  -- action.
  id            text        PRIMARY KEY,
  tenant        text        NOT NULL,
  operation     text        NOT NULL,
  action_key    text        NOT NULL,
  fingerprint   text        NOT NULL,
  -- state is ledger.State.String: in-progress, completed, failed, uncertain.
  state         text        NOT NULL,
  owner         text        NOT NULL DEFAULT '',
  -- token is the fencing token; takeovers add one.
  token         bigint      NOT NULL,
  -- lease_until is set only while in progress. Leases and expiries are
  -- judged by the database's clock (now()), shared by every client.
  lease_until   timestamptz,
  reason        text        NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL,
  -- expires_at ends the retention; a record past it is treated as absent
  -- at once and deleted by Purge.
  expires_at    timestamptz NOT NULL,
  -- attempts is the history, oldest first, as JSON objects
  -- {n, at (Unix microseconds), class, owner, token}; attempt_count counts
  -- every attempt ever made, including any dropped by the cap.
  attempts      jsonb       NOT NULL DEFAULT '[]',
  attempt_count integer     NOT NULL DEFAULT 0,
  -- granted is the verdict of the last ownership grant and granted_from the
  -- stored state it was decided on, so Reserve can re-check the decision
  -- with ledger.Resolve.
  granted       text        NOT NULL DEFAULT '',
  granted_from  text        NOT NULL DEFAULT '',
  -- atomic marks an action whose owner does its effects only inside the
  -- transaction that completes it (Store.BeginAtomic): if its lease runs
  -- out, no effect happened and the action may simply run again.
  atomic        boolean     NOT NULL DEFAULT false,
  -- nonce is the current grant's ReserveRequest.Nonce, so a Reserve sent
  -- again after its reply was lost gets that grant back; promised is its
  -- MarksSending; sending is set by MarkSending and kept for the record's
  -- life: a promised grant never marked, whose lease ran out, was never
  -- sent.
  nonce         text        NOT NULL DEFAULT '',
  promised      boolean     NOT NULL DEFAULT false,
  sending       boolean     NOT NULL DEFAULT false,
  -- granted_unsent records that the last grant was decided on a promised
  -- grant never marked, for Reserve's re-check with ledger.Resolve.
  granted_unsent boolean    NOT NULL DEFAULT false,
  -- The outcome, set once completed.
  status        integer,
  header        jsonb,
  body          bytea,
  body_hash     text,
  body_len      bigint,
  body_omitted  boolean
);

-- outcome_sealed records whether header and body were encrypted
-- (ledger.EncryptionKeys): true or false for every outcome written since
-- the column was added, NULL for those written before it, which are judged
-- by their data (ledger.EncryptionKeys.Open).
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS outcome_sealed boolean;

-- instance is the current grant's ReserveRequest.Instance, the run of its
-- owner: a Reserve by the same owner under another instance finds the
-- holder restarted and takes its lease over at once (ledger.Input.Reclaim).
-- granted_reclaim records that the last grant was such a takeover, for
-- Reserve's re-check with ledger.Resolve.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS instance text NOT NULL DEFAULT '';
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS granted_reclaim boolean NOT NULL DEFAULT false;

-- settle_ms is the current grant's settle time (ReserveRequest.Settle),
-- and settle_until when the settle time of the last send ends, set by
-- MarkSending and AddAttempt: until then the destination may still apply
-- a request sent, so a reconciler's "not found" is not trusted
-- (ledger.Decision.Settling). granted_settling records that the last grant
-- was decided inside it, for Reserve's re-check with ledger.Resolve. Rows
-- from before these columns read as never settling, and their grants as
-- having the default settle time, ledger.DefaultLease.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS settle_ms bigint NOT NULL DEFAULT 30000;
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS settle_until timestamptz;
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS granted_settling boolean NOT NULL DEFAULT false;

-- settlement is the audit trail of the operator who settled the action
-- last (ledger.Record.Settlement), as JSON {by, reason, at (Unix
-- microseconds), applied, reference}; NULL when no operator settled it,
-- as in every row from before the column.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS settlement jsonb;

-- Purge deletes by expiry, oldest first.
CREATE INDEX IF NOT EXISTS {{expires_idx}} ON {{table}} (expires_at);

-- Sweep reads only stuck candidates, oldest lease first.
CREATE INDEX IF NOT EXISTS {{stuck_idx}} ON {{table}} (lease_until NULLS FIRST, created_at, id)
  WHERE state IN ('in-progress', 'uncertain');
