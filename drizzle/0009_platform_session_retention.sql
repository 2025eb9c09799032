ALTER TABLE "sessions" ADD COLUMN "emptied_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "sessions_emptied_idx" ON "sessions" USING btree ("emptied_at") WHERE "sessions"."emptied_at" IS NOT NULL;--> statement-breakpoint
-- Platform-lane sessions already without work count as emptied from now on.
UPDATE "sessions" s SET "emptied_at" = now()
 WHERE s."agent" IS NULL AND NOT EXISTS (SELECT 1 FROM "work_items" w WHERE w."session_id" = s."id");
