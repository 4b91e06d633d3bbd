//===- Import.h - `xfc import DIR [-o FILE.xf]` ------------------*- C++ -*-===//

#ifndef XFC_IMPORT_H
#define XFC_IMPORT_H

namespace xfc {

/// `xfc import ...` with argv[0] = "import"; returns the exit status (0, 1 on a refused or
/// unreadable model, 2 on a bad command line).
int runImport(int argc, char **argv);

} // namespace xfc

#endif // XFC_IMPORT_H
