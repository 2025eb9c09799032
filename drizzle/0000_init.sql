CREATE TABLE "environments" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"config" jsonb NOT NULL,
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "environments_kind_check" CHECK ("environments"."kind" IN ('cloud', 'self_hosted')),
	CONSTRAINT "environments_config_type_check" CHECK (("environments"."config" ->> 'type') IS NOT DISTINCT FROM "environments"."kind")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"environment_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sessions_id_environment_key" UNIQUE("id","environment_id")
);
--> statement-breakpoint
CREATE TABLE "work_items" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text DEFAULT 'default' NOT NULL,
	"workspace_id" text DEFAULT 'default' NOT NULL,
	"project_id" text DEFAULT 'default' NOT NULL,
	"environment_id" text NOT NULL,
	"session_id" text NOT NULL,
	"kind" text NOT NULL,
	"lane" text NOT NULL,
	"state" text DEFAULT 'queued' NOT NULL,
	"lease_expires_at" timestamp with time zone,
	"last_heartbeat" timestamp with time zone,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"claims" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"acknowledged_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"stop_requested_at" timestamp with time zone,
	"stopped_at" timestamp with time zone,
	"trace_context" jsonb,
	CONSTRAINT "work_items_kind_check" CHECK ("work_items"."kind" IN ('model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec')),
	CONSTRAINT "work_items_state_check" CHECK ("work_items"."state" IN ('queued', 'starting', 'active', 'stopping', 'stopped')),
	CONSTRAINT "work_items_lane_check" CHECK ("work_items"."lane" IN ('claim', 'poll'))
);
--> statement-breakpoint
CREATE TABLE "worker_polls" (
	"environment_id" text NOT NULL,
	"worker_id" text NOT NULL,
	"last_polled_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "worker_polls_environment_id_worker_id_pk" PRIMARY KEY("environment_id","worker_id")
);
--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_session_fk" FOREIGN KEY ("session_id","environment_id") REFERENCES "public"."sessions"("id","environment_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "worker_polls" ADD CONSTRAINT "worker_polls_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sessions_environment_idx" ON "sessions" USING btree ("environment_id");--> statement-breakpoint
CREATE UNIQUE INDEX "work_items_live_slot_key" ON "work_items" USING btree ("session_id","kind") WHERE "work_items"."state" IN ('queued', 'starting', 'active');--> statement-breakpoint
CREATE INDEX "work_items_claim_idx" ON "work_items" USING btree ("kind","created_at") WHERE "work_items"."lane" = 'claim' AND "work_items"."state" IN ('queued', 'active');--> statement-breakpoint
CREATE INDEX "work_items_poll_idx" ON "work_items" USING btree ("environment_id","created_at") WHERE "work_items"."lane" = 'poll' AND "work_items"."state" IN ('queued', 'starting', 'active');--> statement-breakpoint
CREATE INDEX "work_items_stopping_idx" ON "work_items" USING btree ("environment_id") WHERE "work_items"."state" = 'stopping';--> statement-breakpoint
CREATE INDEX "work_items_list_idx" ON "work_items" USING btree ("environment_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "work_items"."lane" = 'poll';--> statement-breakpoint
CREATE INDEX "work_items_session_idx" ON "work_items" USING btree ("session_id");