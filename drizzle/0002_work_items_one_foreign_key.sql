ALTER TABLE "work_items" DROP CONSTRAINT "work_items_environment_id_environments_id_fk";
