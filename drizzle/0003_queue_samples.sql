CREATE TABLE "queue_samples" (
	"environment_id" text NOT NULL,
	"minute" timestamp with time zone NOT NULL,
	"depth" integer NOT NULL,
	"pending" integer NOT NULL,
	"workers_polling" integer NOT NULL,
	"claim_queued" integer NOT NULL,
	"oldest_queued_at" timestamp with time zone,
	CONSTRAINT "queue_samples_environment_id_minute_pk" PRIMARY KEY("environment_id","minute")
);
--> statement-breakpoint
ALTER TABLE "queue_samples" ADD CONSTRAINT "queue_samples_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE cascade ON UPDATE no action;