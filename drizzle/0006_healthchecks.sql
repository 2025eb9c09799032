ALTER TABLE "work_items" ALTER COLUMN "session_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "work_items" ADD COLUMN "data_type" text DEFAULT 'session' NOT NULL;--> statement-breakpoint
ALTER TABLE "work_items" ADD COLUMN "healthcheck_id" text;--> statement-breakpoint
ALTER TABLE "work_items" ADD COLUMN "healthcheck_environment_id" text;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_healthcheck_environment_fk" FOREIGN KEY ("healthcheck_environment_id") REFERENCES "public"."environments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "work_items_live_healthcheck_key" ON "work_items" USING btree ("environment_id") WHERE "work_items"."data_type" = 'healthcheck' AND "work_items"."state" IN ('queued', 'starting', 'active');--> statement-breakpoint
CREATE INDEX "work_items_healthcheck_idx" ON "work_items" USING btree ("healthcheck_environment_id","acknowledged_at") WHERE "work_items"."healthcheck_environment_id" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_data_check" CHECK (("work_items"."data_type" = 'session' AND "work_items"."session_id" IS NOT NULL AND "work_items"."healthcheck_id" IS NULL
           AND "work_items"."healthcheck_environment_id" IS NULL)
       OR ("work_items"."data_type" = 'healthcheck' AND "work_items"."session_id" IS NULL AND "work_items"."healthcheck_id" IS NOT NULL
           AND "work_items"."healthcheck_environment_id" = "work_items"."environment_id" AND "work_items"."kind" = 'tool_exec'
           AND "work_items"."lane" = 'poll'));