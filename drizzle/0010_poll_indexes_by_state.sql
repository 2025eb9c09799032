DROP INDEX IF EXISTS "work_items_poll_idx";--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "work_items_poll_queued_idx" ON "work_items" USING btree ("environment_id","created_at") WHERE "work_items"."lane" = 'poll' AND "work_items"."state" = 'queued';--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "work_items_poll_lease_idx" ON "work_items" USING btree ("environment_id","lease_expires_at") WHERE "work_items"."lane" = 'poll' AND "work_items"."state" IN ('starting', 'active');
