CREATE TABLE "agent_versions" (
	"agent_id" text NOT NULL,
	"version" integer NOT NULL,
	"definition" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_versions_agent_id_version_pk" PRIMARY KEY("agent_id","version")
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"version" integer NOT NULL,
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_events" (
	"session_id" text NOT NULL,
	"seq" integer NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"body" jsonb NOT NULL,
	"processed_at" timestamp with time zone NOT NULL,
	"turn" integer,
	CONSTRAINT "session_events_session_id_seq_pk" PRIMARY KEY("session_id","seq"),
	CONSTRAINT "session_events_id_key" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "session_tool_calls" (
	"session_id" text NOT NULL,
	"event_id" text NOT NULL,
	"model_tool_use_id" text NOT NULL,
	"custom" boolean NOT NULL,
	"name" text NOT NULL,
	"requested_seq" integer NOT NULL,
	"answered_seq" integer,
	"answer" jsonb,
	"rearms" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "session_tool_calls_session_id_event_id_pk" PRIMARY KEY("session_id","event_id")
);
--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "agent" jsonb;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "agent_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "agent_version" integer;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "status" text DEFAULT 'idle' NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "title" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "metadata" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "resources" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "usage" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "active_seconds" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "running_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "last_seq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "last_event_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "archived_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_versions" ADD CONSTRAINT "agent_versions_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_events" ADD CONSTRAINT "session_events_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_tool_calls" ADD CONSTRAINT "session_tool_calls_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agents_created_idx" ON "agents" USING btree ("created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "session_events_type_idx" ON "session_events" USING btree ("session_id","type","seq");--> statement-breakpoint
CREATE INDEX "session_tool_calls_open_idx" ON "session_tool_calls" USING btree ("session_id") WHERE "session_tool_calls"."answered_seq" IS NULL;--> statement-breakpoint
CREATE INDEX "sessions_list_idx" ON "sessions" USING btree ("created_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "sessions"."agent" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_status_check" CHECK ("sessions"."status" IN ('idle', 'running', 'rescheduling', 'terminated'));