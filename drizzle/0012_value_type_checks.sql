CREATE TYPE "public"."session_status" AS ENUM('idle', 'running', 'rescheduling', 'terminated');--> statement-breakpoint
CREATE TYPE "public"."work_kind" AS ENUM('model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec');--> statement-breakpoint
CREATE TYPE "public"."work_lane" AS ENUM('claim', 'poll');--> statement-breakpoint
CREATE TYPE "public"."work_state" AS ENUM('queued', 'starting', 'active', 'stopping', 'stopped');--> statement-breakpoint
ALTER TABLE "sessions" DROP CONSTRAINT "sessions_status_check";--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_kind_check";--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_state_check";--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_lane_check";--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_status_check" CHECK (("sessions"."status")::session_status IS NOT NULL);--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_kind_check" CHECK (("work_items"."kind")::work_kind IS NOT NULL);--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_state_check" CHECK (("work_items"."state")::work_state IS NOT NULL);--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_lane_check" CHECK (("work_items"."lane")::work_lane IS NOT NULL);