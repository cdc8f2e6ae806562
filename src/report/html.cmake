target_sources(ptxbench_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/html.cc)
ptxbench_add_test(report_html_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/html_test.cc)
