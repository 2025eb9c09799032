-- Raised by a batch enqueue when an input finds its (session, kind) slot taken by a live item
-- of another environment: the input names a session bound elsewhere, and the whole statement
-- must fail, inserts included. Inserted rows are checked by the work item's foreign key; this
-- says the same for the rows the conflict kept out, with the same SQLSTATE and DETAIL, so the
-- caller handles both alike. Returns boolean only so it can stand in a condition; it never returns.
CREATE OR REPLACE FUNCTION leasehold_refuse_unbound(session_id text, environment_id text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'insert or update on table "work_items" violates foreign key constraint "work_items_session_fk"'
    USING ERRCODE = 'foreign_key_violation',
          DETAIL = format('Key (session_id, environment_id)=(%s, %s) is not present in table "sessions".',
                          session_id, environment_id);
END
$$;
