// aicore-sim's gtest runner for 'aicore-sim ut': the C entry points Python calls.
//
// Written for aicore-sim; no vendor code. Included by the one generated runner unit of a unit
// test library (with googletest): aicore_sim_ut_main runs the TESTs (gtest's own output and
// summary on stdout), aicore_sim_ut_current_test names the running one (the run folders'
// names), aicore_sim_ut_fail turns a launch that failed into a failure of that TEST.
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" {

__attribute__((visibility("default"), used)) int aicore_sim_ut_main(int argc, char** argv) {
    std::vector<char*> args(argv, argv + argc);
    args.push_back(nullptr);
    int n = argc;
    testing::InitGoogleTest(&n, args.data());
    // a library run again in the same process: InitGoogleTest parses flags only once, so
    // the filter is set here each time
    std::string filter = "*";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--gtest_filter=", 0) == 0) filter = a.substr(15);
    }
    testing::GTEST_FLAG(filter) = filter;
    return RUN_ALL_TESTS();
}

__attribute__((visibility("default"), used)) const char* aicore_sim_ut_current_test() {
    static thread_local std::string name;
    const testing::TestInfo* info = testing::UnitTest::GetInstance()->current_test_info();
    name = info == nullptr ? std::string("no-test")
                           : std::string(info->test_suite_name()) + "." + info->name();
    return name.c_str();
}

void aicore_sim_ut_fail(const char* file, int line, const char* message) {
    ADD_FAILURE_AT(file, line) << "ICPU_RUN_KF: " << message;
}
}
