#include "core/value_origin.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

TEST(ValueOrigin, NamesAreTheWordsOfSpecCliMd) {
  EXPECT_EQ(origin_name(ValueOrigin::Flag), "flag");
  EXPECT_EQ(origin_name(ValueOrigin::Config), "config");
  EXPECT_EQ(origin_name(ValueOrigin::Environment), "environment");
  EXPECT_EQ(origin_name(ValueOrigin::Default), "default");
}

} // namespace
} // namespace dedupctl::core
