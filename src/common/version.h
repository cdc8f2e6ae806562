// Which ptxbench made a record: the release (PTXBENCH_VERSION) and the source commit.
#pragma once

namespace ptxbench {

// The git commit the binary was built from (12 hex digits, "-dirty" with uncommitted
// changes), $PTXBENCH_COMMIT at build time where the tree has no .git, else "unknown".
const char* PtxbenchCommit();

}  // namespace ptxbench
