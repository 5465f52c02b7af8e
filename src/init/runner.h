/* bulkhead-init --project: the project runner (include/bulkhead-proto/project.h). */
#ifndef BH_INIT_RUNNER_H
#define BH_INIT_RUNNER_H

/* 0 once the report is written; 2 when the plan does not parse (no report). */
int bh_project_main(void);

#endif
