target_sources(ptxbench_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/metrics.cc)
ptxbench_add_test(report_metrics_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cc PERF)
