CREATE TABLE "journal_purges" (
	"run_id" text PRIMARY KEY NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_until" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "sessions_archived_idx" ON "sessions" USING btree ("archived_at") WHERE "sessions"."archived_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "work_items_stopped_idx" ON "work_items" USING btree ("stopped_at") WHERE "work_items"."state" = 'stopped';