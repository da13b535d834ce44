# flexcsi_metrics: the bridge's Prometheus metrics and the small HTTP server that exposes them.
# Included from bridge/CMakeLists.txt. No gRPC: Metrics speaks flexcsi::Code, and the HTTP
# server is Boost.Asio only.
add_library(flexcsi_metrics STATIC
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_http_server.cc)
target_include_directories(flexcsi_metrics PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(flexcsi_metrics PUBLIC flexcsi_status Boost::headers Threads::Threads
                      PRIVATE flexcsi_version)
target_compile_options(flexcsi_metrics PRIVATE ${FLEXCSI_WARNINGS})

if(BUILD_TESTING OR NOT DEFINED BUILD_TESTING)
  add_executable(flexcsi_metrics_test
    ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/metrics_http_server_test.cc)
  target_link_libraries(flexcsi_metrics_test
                        PRIVATE flexcsi_metrics flexcsi_version GTest::gtest_main)
  target_compile_options(flexcsi_metrics_test PRIVATE ${FLEXCSI_WARNINGS})
  flexcsi_add_gtest(flexcsi_metrics_test)
endif()
