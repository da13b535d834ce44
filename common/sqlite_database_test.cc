#include "common/sqlite_database.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

class SqliteDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flexcsi-sqlite-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int64_t Count(const SqliteDatabase& db, const std::string& table) {
    SqliteStatement s(db, "SELECT COUNT(*) FROM " + table);
    EXPECT_TRUE(s.prepared().ok());
    EXPECT_EQ(s.Step(), SQLITE_ROW);
    return s.Int(0);
  }

  std::string dir_;
  std::string path_;
};

constexpr const char* kV1 = "CREATE TABLE t(a TEXT);";
constexpr const char* kV1ToV2 = "ALTER TABLE t ADD COLUMN b INTEGER NOT NULL DEFAULT 7;";

TEST_F(SqliteDatabaseTest, OlderSchemaIsMigratedKeepingRows) {
  {
    auto db = SqliteDatabase::Open(path_, "test store", {kV1});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    SqliteStatement put(**db, "INSERT INTO t(a) VALUES(?)");
    ASSERT_TRUE(put.Bind(std::string("kept")).Run("insert").ok());
  }
  auto db = SqliteDatabase::Open(path_, "test store", {kV1, kV1ToV2});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  SqliteStatement get(**db, "SELECT a, b FROM t");
  ASSERT_EQ(get.Step(), SQLITE_ROW);
  EXPECT_EQ(get.Text(0), "kept");
  EXPECT_EQ(get.Int(1), 7);
}

TEST_F(SqliteDatabaseTest, NewerSchemaIsRefusedNotDowngraded) {
  ASSERT_TRUE(SqliteDatabase::Open(path_, "test store", {kV1, kV1ToV2}).ok());
  auto db = SqliteDatabase::Open(path_, "test store", {kV1});
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("newer flexcsi"), std::string::npos);
}

TEST_F(SqliteDatabaseTest, FailedMigrationLeavesTheOldVersion) {
  ASSERT_TRUE(SqliteDatabase::Open(path_, "test store", {kV1}).ok());
  auto bad = SqliteDatabase::Open(path_, "test store", {kV1, "ALTER TABLE nowhere ADD x;"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("test store"), std::string::npos);
  auto db = SqliteDatabase::Open(path_, "test store", {kV1, kV1ToV2});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
}

TEST_F(SqliteDatabaseTest, FailedTransactionBodyRollsBack) {
  auto db = SqliteDatabase::Open(path_, "test store", {kV1});
  ASSERT_TRUE(db.ok());
  Status s = (*db)->InTransaction([&]() -> Status {
    SqliteStatement put(**db, "INSERT INTO t(a) VALUES('x')");
    FLEXCSI_RETURN_IF_ERROR(put.Run("insert"));
    return Internal("step failed");
  });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(Count(**db, "t"), 0);
}

TEST_F(SqliteDatabaseTest, BlobsAndNullsReadBack) {
  auto db = SqliteDatabase::Open(path_, "test store", {"CREATE TABLE t(a BLOB, b TEXT);"}, 0600);
  ASSERT_TRUE(db.ok());
  const std::string bytes("a\0b", 3);
  SqliteStatement put(**db, "INSERT INTO t VALUES(?, ?)");
  ASSERT_TRUE(put.BindBlob(bytes).BindNullable("").Run("insert").ok());
  SqliteStatement get(**db, "SELECT a, b FROM t");
  ASSERT_EQ(get.Step(), SQLITE_ROW);
  EXPECT_EQ(get.Text(0), bytes);
  EXPECT_EQ(get.Text(1), "");
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SqliteDatabaseTest, UnopenablePathNamesTheStore) {
  auto db = SqliteDatabase::Open(dir_ + "/missing/dir/db", "test store", {kV1});
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("cannot open test store"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi
