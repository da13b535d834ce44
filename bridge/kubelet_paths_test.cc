#include "bridge/kubelet_paths.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace flexcsi {
namespace {

// A fresh directory for a kubelet root, removed with everything in it at the end of a test.
class TempRoot {
 public:
  TempRoot() {
    char tmpl[] = "/tmp/kubelet-paths-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/root";
    EXPECT_EQ(mkdir(root_.c_str(), 0700), 0);
    char real[PATH_MAX];
    EXPECT_NE(realpath(root_.c_str(), real), nullptr);
    real_root_ = real;
  }
  ~TempRoot() { EXPECT_EQ(system(("rm -rf " + dir_).c_str()), 0); }
  const std::string& dir() const { return dir_; }
  const std::string& root() const { return root_; }
  const std::string& real_root() const { return real_root_; }
  void MakeDirs(const std::string& below_root) const {
    ASSERT_EQ(system(("mkdir -p " + root_ + "/" + below_root).c_str()), 0);
  }

 private:
  std::string dir_;
  std::string root_;
  std::string real_root_;
};

TEST(KubeletPathsTest, AcceptsPathsBelowTheRootAndNormalisesThem) {
  auto p = CheckUnderKubeletRoot("/var/lib/kubelet//pods/u1/./volumes/foo~bar/pv/",
                                 "/var/lib/kubelet");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "/var/lib/kubelet/pods/u1/volumes/foo~bar/pv");
}

TEST(KubeletPathsTest, ParsesAPodVolumeDir) {
  // flexvolume.md §5 example.
  auto p = ParseKubeletPath(
      "/var/lib/kubelet/pods/6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10/volumes/foo~bar/pv-data",
      "/var/lib/kubelet");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kind, KubeletPathKind::kPodVolumeDir);
  EXPECT_EQ(p->path,
            "/var/lib/kubelet/pods/6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10/volumes/foo~bar/pv-data");
  EXPECT_EQ(p->pod_uid, "6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10");
  EXPECT_EQ(p->flex_driver, "foo/bar");
  EXPECT_EQ(p->volume_name, "pv-data");
}

TEST(KubeletPathsTest, ParsesADeviceMountPath) {
  auto p = ParseKubeletPath(DeviceMountPathFor("/var/lib/kubelet", "foo/bar", "pv-data"),
                            "/var/lib/kubelet/");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kind, KubeletPathKind::kDeviceMountPath);
  EXPECT_EQ(p->path, "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/foo/bar/mounts/pv-data");
  EXPECT_EQ(p->pod_uid, "");
  EXPECT_EQ(p->flex_driver, "foo/bar");
  EXPECT_EQ(p->volume_name, "pv-data");
}

TEST(KubeletPathsTest, DriverNamesWithMoreThanOneSlashKeepTheirParts) {
  // Dir a~b~c is driver a/b/c (flexvolume.md §1.1); the bridge config allows such names.
  auto pod = ParseKubeletPath("/k/pods/u/volumes/a~b~c/v", "/k");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->flex_driver, "a/b/c");
  auto device = ParseKubeletPath("/k/plugins/kubernetes.io/flexvolume/a/b/c/mounts/v", "/k");
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  EXPECT_EQ(device->flex_driver, "a/b/c");
  EXPECT_EQ(device->volume_name, "v");
}

TEST(KubeletPathsTest, RefusesEverythingElse) {
  for (const char* bad : {"", "relative/path", "/var/lib/kubelet", "/var/lib/kubelet/",
                          "/var/lib/kubeletX/pods", "/etc/passwd",
                          "/var/lib/kubelet/pods/../../../etc",
                          // Below the root but not a shape kubelet passes to a driver.
                          "/var/lib/kubelet/pki", "/var/lib/kubelet/pki/kubelet.key",
                          "/var/lib/kubelet/pods", "/var/lib/kubelet/pods/u",
                          "/var/lib/kubelet/pods/u/volumes", "/var/lib/kubelet/pods/u/volumes/a~b",
                          "/var/lib/kubelet/pods/u/volumes/a~b/v/extra",
                          "/var/lib/kubelet/pods/u/volumes/a~b/v/x/y",
                          "/var/lib/kubelet/pods/u/x/volumes/a~b/v",
                          "/var/lib/kubelet/pods/u/plugins/a~b/v",
                          "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount",
                          "/var/lib/kubelet/pods/u/volumes/cifs/v",  // no vendor
                          "/var/lib/kubelet/pods/u/volumes/~b/v",
                          "/var/lib/kubelet/pods/u/volumes/a~/v",
                          "/var/lib/kubelet/pods/u/volumes/a~~b/v",
                          "/var/lib/kubelet/pods/u/volumes/a~b/../../../../pki",
                          "/var/lib/kubelet/pods/u/volumes/a~b/..",
                          "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/a/b/mounts",
                          "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/a/mounts/v",
                          "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/a/b/mounts/v/x",
                          "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/a~b/c/mounts/v",
                          "/var/lib/kubelet/plugins/kubernetes.io/csi/a/b/mounts/v",
                          "/var/lib/kubelet/plugins/flexcsi/d/h/globalmount",
                          "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/a/b/c/v"}) {
    auto p = ParseKubeletPath(bad, "/var/lib/kubelet");
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(CheckUnderKubeletRoot(bad, "/var/lib/kubelet").status().code(),
              Code::kInvalidArgument)
        << bad;
  }
}

TEST(KubeletPathsTest, TheRefusalNamesThePathAndTheShapes) {
  auto p = ParseKubeletPath("/var/lib/kubelet/pki", "/var/lib/kubelet");
  ASSERT_EQ(p.status().code(), Code::kInvalidArgument);
  EXPECT_NE(p.status().message().find("/var/lib/kubelet/pki"), std::string::npos);
  EXPECT_NE(p.status().message().find(
                "/var/lib/kubelet/pods/<podUID>/volumes/<vendor>~<driver>/<volumeName>"),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("/var/lib/kubelet/plugins/kubernetes.io/flexvolume/"
                                      "<vendor>/<driver>/mounts/<volumeName>"),
            std::string::npos)
      << p.status().message();
}

TEST(KubeletPathsTest, KubeletRootNoneRefusesEveryPath) {
  EXPECT_EQ(ParseKubeletPath("/var/lib/kubelet/pods/u/volumes/a~b/v", "").status().code(),
            Code::kFailedPrecondition);
}

TEST(KubeletPathsTest, RefusesASymlinkThatLeadsOutOfTheRoot) {
  TempRoot t;
  t.MakeDirs("pods/u/volumes");
  ASSERT_EQ(symlink("/etc", (t.root() + "/pods/u/volumes/a~b").c_str()), 0);
  EXPECT_EQ(CheckUnderKubeletRoot(t.root() + "/pods/u/volumes/a~b/v", t.root()).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(CheckUnderKubeletRoot(t.root() + "/pods/u2/volumes/a~b/v", t.root()).ok());
}

TEST(KubeletPathsTest, RefusesASymlinkInsideTheRootThatLeadsToAnotherPlace) {
  TempRoot t;
  t.MakeDirs("pki");
  t.MakeDirs("pods/u/volumes/a~b");
  t.MakeDirs("pods/other/volumes/a~b/v");
  // The volume dir itself, or a directory on the way, is a symlink to somewhere else inside.
  ASSERT_EQ(symlink((t.root() + "/pki").c_str(), (t.root() + "/pods/u/volumes/a~b/v").c_str()), 0);
  t.MakeDirs("plugins/kubernetes.io/flexvolume/a");
  ASSERT_EQ(symlink((t.root() + "/pki").c_str(),
                    (t.root() + "/plugins/kubernetes.io/flexvolume/a/b").c_str()),
            0);
  ASSERT_EQ(symlink((t.root() + "/pods/other").c_str(), (t.root() + "/pods/u3").c_str()), 0);
  for (const std::string& bad :
       {t.root() + "/pods/u/volumes/a~b/v",
        t.root() + "/plugins/kubernetes.io/flexvolume/a/b/mounts/v",
        // Same shape, but another pod's volume: a symlink is no way to name it.
        t.root() + "/pods/u3/volumes/a~b/v"}) {
    auto p = ParseKubeletPath(bad, t.root());
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(KubeletPathsTest, ReturnsTheResolvedPathWhenTheRootIsASymlink) {
  TempRoot t;
  const std::string link = t.dir() + "/link";
  ASSERT_EQ(symlink(t.root().c_str(), link.c_str()), 0);
  t.MakeDirs("pods/u/volumes/a~b/v");
  const std::string real_root = t.real_root();
  auto p = ParseKubeletPath(link + "/pods/u/volumes/a~b/v", link);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->path, real_root + "/pods/u/volumes/a~b/v");
  // What kubelet gave, the key of records from before 0.2.0 (unmount and unmountdevice find them).
  EXPECT_EQ(p->given_path, link + "/pods/u/volumes/a~b/v");
  EXPECT_EQ(RecordKeysOf(*p),
            (std::vector<std::string>{real_root + "/pods/u/volumes/a~b/v",
                                      link + "/pods/u/volumes/a~b/v"}));
  auto direct = ParseKubeletPath(real_root + "/pods/u/volumes/a~b/v", real_root);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_EQ(RecordKeysOf(*direct), std::vector<std::string>{real_root + "/pods/u/volumes/a~b/v"});
  auto d = CheckUnderKubeletRoot(link + "/plugins/kubernetes.io/flexvolume/a/b/mounts/v", link);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, real_root + "/plugins/kubernetes.io/flexvolume/a/b/mounts/v");
}

// Random paths made of kubelet-ish components: never a crash, and whatever is accepted is
// exactly one of the two shapes, rebuilt from the parts the parser reports.
TEST(KubeletPathsTest, RandomPathsAreAcceptedOnlyInKubeletsShapes) {
  TempRoot t;
  t.MakeDirs("pods/u/volumes/a~b");
  t.MakeDirs("plugins/kubernetes.io/flexvolume/a/b/mounts");
  ASSERT_EQ(symlink((t.root() + "/pods").c_str(), (t.root() + "/pods/u/volumes/a~b/p").c_str()),
            0);
  ASSERT_EQ(symlink("/", (t.root() + "/plugins/kubernetes.io/flexvolume/a/b/mounts/r").c_str()),
            0);
  const std::vector<std::string> words = {
      "pods", "volumes", "plugins", "kubernetes.io", "flexvolume", "mounts", "a~b", "a", "b",
      "u",    "p",       "r",       "~",             "a~",         "~b",     "..",  ".", "",
      "pki",  "a~b~c",   "x y",     "flexvolume-a~b", "\xff"};
  std::mt19937 random(46);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    auto word = [&] { return words[random() % words.size()]; };
    // One of the shapes with random parts, or random components, then up to two mutations.
    std::vector<std::string> parts;
    switch (random() % 3) {
      case 0:
        parts = {"pods", word(), "volumes", word(), word()};
        break;
      case 1:
        parts = {"plugins", "kubernetes.io", "flexvolume", word(), word(), "mounts", word()};
        break;
      default:
        for (int j = static_cast<int>(random() % 9); j > 0; --j) parts.push_back(word());
    }
    for (int m = static_cast<int>(random() % 3); m > 0 && !parts.empty(); --m) {
      const size_t at = random() % parts.size();
      switch (random() % 3) {
        case 0:
          parts[at] = word();
          break;
        case 1:
          parts.insert(parts.begin() + static_cast<long>(at), word());
          break;
        default:
          parts.erase(parts.begin() + static_cast<long>(at));
      }
    }
    std::string path = random() % 16 == 0 ? "" : t.root();
    for (const std::string& part : parts) path += "/" + part;
    if (random() % 10 == 0) path += "/";
    auto p = ParseKubeletPath(path, t.root());
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << path;
      continue;
    }
    ++accepted;
    EXPECT_EQ(path.find(".."), std::string::npos) << path;
    EXPECT_FALSE(p->volume_name.empty()) << path;
    EXPECT_NE(p->flex_driver.find('/'), std::string::npos) << path;
    EXPECT_EQ(p->flex_driver.find('~'), std::string::npos) << path;
    std::string rebuilt;
    if (p->kind == KubeletPathKind::kPodVolumeDir) {
      std::string dir = p->flex_driver;
      for (char& c : dir) c = c == '/' ? '~' : c;
      rebuilt = t.real_root() + "/pods/" + p->pod_uid + "/volumes/" + dir + "/" + p->volume_name;
      EXPECT_FALSE(p->pod_uid.empty()) << path;
    } else {
      rebuilt = DeviceMountPathFor(t.real_root(), p->flex_driver, p->volume_name);
      EXPECT_TRUE(p->pod_uid.empty()) << path;
    }
    EXPECT_EQ(p->path, rebuilt) << path;
  }
  EXPECT_GT(accepted, 1000);
}

TEST(KubeletPathsTest, DeviceMountPathKeepsTheDriverSlash) {
  // flexvolume.md §5 example.
  EXPECT_EQ(DeviceMountPathFor("/var/lib/kubelet", "foo/bar", "pv-data"),
            "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/foo/bar/mounts/pv-data");
}

TEST(KubeletPathsTest, BridgeStagingPathHashesTheVolumeHandle) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(BridgeStagingPathFor("/var/lib/kubelet", "d.example.com", "abc"),
            "/var/lib/kubelet/plugins/flexcsi/d.example.com/"
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad/globalmount");
}

}  // namespace
}  // namespace flexcsi
