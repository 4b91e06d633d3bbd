//===- OutputFile.cpp - Files written whole or not at all -----------------===//
#include "xfrt/OutputFile.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace xfrt {
namespace {

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseNameOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char *describeType(mode_t mode) {
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

mode_t currentUmask() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

std::string errnoText(int error) { return std::strerror(error); }

} // namespace

Status checkOutputTarget(const std::string &path) {
  if (path.empty())
    return makeError("empty output file name");
  if (path.back() == '/')
    return makeError(path + ": names a directory, not a file");
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return makeError(path + ": is " + describeType(st.st_mode) +
                       ", not a regular file; refusing to replace it");
    return Status::success();
  }
  if (errno != ENOENT)
    return makeError(path + ": " + errnoText(errno));
  std::string dir = directoryOf(path);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return makeError(path + ": the directory '" + dir + "' does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return makeError(path + ": cannot write in '" + dir + "': " + errnoText(errno));
  return Status::success();
}

Expected<AtomicOutputFile> AtomicOutputFile::create(const std::string &path, Kind kind) {
  if (Status s = checkOutputTarget(path); !s)
    return s;
  // ".<name>.XXXXXX" beside the target, so the rename never crosses file systems.
  std::string temp = directoryOf(path) + "/." + baseNameOf(path).substr(0, 200) + ".XXXXXX";
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0)
    return makeError(path + ": cannot create a temporary file in '" + directoryOf(path) +
                     "': " + errnoText(errno));
  AtomicOutputFile file;
  file.path_ = path;
  file.temp_ = temp;
  file.fd_ = fd;
  file.kind_ = kind;
  return file;
}

AtomicOutputFile::AtomicOutputFile(AtomicOutputFile &&other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), fd_(other.fd_),
      kind_(other.kind_), committed_(other.committed_) {
  other.fd_ = -1;
  other.temp_.clear();
}

AtomicOutputFile::~AtomicOutputFile() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!committed_ && !temp_.empty())
    ::unlink(temp_.c_str());
}

Status AtomicOutputFile::write(const void *data, size_t size) {
  if (fd_ < 0)
    return makeError(path_ + ": write after the file was closed");
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    // Linux writes at most about 2 GiB per call.
    ssize_t n = ::write(fd_, p, size < (size_t(1) << 30) ? size : (size_t(1) << 30));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return makeError(path_ + ": write error: " + errnoText(n < 0 ? errno : EIO));
    p += n;
    size -= size_t(n);
  }
  return Status::success();
}

void AtomicOutputFile::releaseDescriptor() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

Status AtomicOutputFile::commit() {
  if (committed_ || temp_.empty())
    return makeError(path_ + ": committed twice");
  int fd = fd_;
  fd_ = -1;
  if (fd < 0) {
    fd = ::open(temp_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return makeError(path_ + ": cannot reopen " + temp_ + ": " + errnoText(errno));
  }
  auto fail = [&](const std::string &what) {
    int saved = errno;
    ::close(fd);
    return makeError(path_ + ": " + what + ": " + errnoText(saved));
  };
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return fail("the temporary " + temp_ + " is not a regular file");
  if (::fsync(fd) != 0)
    return fail("write error (fsync)");
  // A replaced file keeps its permissions; a new one gets the usual 0666/0777 less the umask.
  mode_t mode = (kind_ == Kind::Executable ? 0777 : 0666) & ~currentUmask();
  struct stat target;
  if (::lstat(path_.c_str(), &target) == 0) {
    if (!S_ISREG(target.st_mode)) {
      errno = EEXIST;
      return fail(std::string("became ") + describeType(target.st_mode) + " while writing");
    }
    mode = target.st_mode & 07777;
  }
  if (::fchmod(fd, mode) != 0)
    return fail("cannot set permissions");
  if (::close(fd) != 0) {
    int saved = errno;
    return makeError(path_ + ": write error: " + errnoText(saved));
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    return makeError(path_ + ": cannot replace it: " + errnoText(errno));
  committed_ = true;
  // The rename itself is durable once the directory is synced (best effort).
  int dir = ::open(directoryOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return Status::success();
}

Status writeFileAtomically(const std::string &path, const void *data, size_t size) {
  Expected<AtomicOutputFile> file = AtomicOutputFile::create(path);
  if (!file)
    return file.status();
  if (Status s = file->write(data, size); !s)
    return s;
  return file->commit();
}

namespace {
// What makes two names one file: the inode when the file exists, else the canonical directory
// and the name (two outputs not yet created).
struct FileIdentity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string name;
};

FileIdentity identify(const std::string &path) {
  FileIdentity id;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    return id;
  }
  std::string dir = directoryOf(path);
  char *real = ::realpath(dir.c_str(), nullptr);
  id.name = (real ? std::string(real) : dir) + "/" + baseNameOf(path);
  std::free(real);
  return id;
}

bool sameFile(const FileIdentity &a, const FileIdentity &b) {
  if (a.exists != b.exists)
    return false;
  return a.exists ? a.device == b.device && a.inode == b.inode : a.name == b.name;
}


// A directory input stands for the files in it (a tokenizer directory's vocab.json, ...): an
// output may not replace any of them.
std::vector<std::pair<std::string, FileIdentity>> filesOf(const std::string &path) {
  std::vector<std::pair<std::string, FileIdentity>> files;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    files.push_back({path, identify(path)});
    return files;
  }
  DIR *dir = ::opendir(path.c_str());
  if (!dir)
    return files;
  while (const dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..")
      continue;
    std::string file = path + (path.back() == '/' ? "" : "/") + name;
    FileIdentity id = identify(file);
    if (id.exists)
      files.push_back({file, id});
  }
  ::closedir(dir);
  return files;
}
} // namespace

NamedPath runningExecutable() {
  char *real = ::realpath("/proc/self/exe", nullptr);
  NamedPath exe{"the running executable", real ? real : "/proc/self/exe"};
  std::free(real);
  return exe;
}

Status checkDistinctPaths(const std::vector<NamedPath> &outputs,
                          const std::vector<NamedPath> &inputs) {
  std::vector<FileIdentity> outIds;
  for (const NamedPath &out : outputs)
    outIds.push_back(identify(out.path));
  std::vector<std::pair<const NamedPath *, std::pair<std::string, FileIdentity>>> inputFiles;
  for (const NamedPath &in : inputs)
    if (!in.path.empty())
      for (auto &file : filesOf(in.path))
        inputFiles.push_back({&in, std::move(file)});
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const auto &[in, file] : inputFiles)
      if (sameFile(outIds[i], file.second)) {
        std::string which = file.first == in->path ? "" : " (" + file.first + ")";
        return makeError(outputs[i].option + " " + outputs[i].path + ": the same file as " +
                         in->option + " " + in->path + which +
                         "; refusing to overwrite an input");
      }
    for (size_t j = 0; j < i; ++j)
      if (sameFile(outIds[i], outIds[j]))
        return makeError(outputs[i].option + " " + outputs[i].path + ": the same file as " +
                         outputs[j].option + " " + outputs[j].path +
                         "; give each output its own file");
  }
  return Status::success();
}

} // namespace xfrt
