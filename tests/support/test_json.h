// Helpers for the translator tests: JSON literals and readable comparisons.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {
namespace translator {

inline nlohmann::json J(const std::string& text) { return nlohmann::json::parse(text); }

// Compares pretty dumps so that a failure shows both documents.
#define EXPECT_JSON_EQ(actual, expected) EXPECT_EQ((actual).dump(1), (expected).dump(1))

// The expected result of one table row: an object, or an error message.
struct Expected {
  std::string json;   // used when error is empty
  std::string error;  // exact message
};

template <typename T>
void ExpectResult(const StatusOr<T>& got, const Expected& want) {
  if (!want.error.empty()) {
    ASSERT_FALSE(got.ok()) << "expected error: " << want.error;
    EXPECT_EQ(got.status().message(), want.error);
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_JSON_EQ(*got, J(want.json));
}

}  // namespace translator
}  // namespace flexcsi
