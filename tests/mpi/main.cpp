// The main() of unimem_mpi_tests: MPI through unimem::mpi::environment, GoogleTest on every rank
// in step (a barrier before and after each test), and one verdict for the whole job.
#include <unimem/mpi.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

/// Keeps the ranks in step: no test's messages can meet another test's receives.
class in_step : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { MPI_Barrier(MPI_COMM_WORLD); }
  void OnTestEnd(const ::testing::TestInfo&) override { MPI_Barrier(MPI_COMM_WORLD); }
};

/// Before MPI_Init, unimem::mpi refuses to communicate with a clear error.
bool refuses_before_init() {
  try {
    std::vector<int> v(1);
    unimem::mpi::send(v, 0, 0);
  } catch (const unimem::argument_error& e) {
    if (std::strstr(e.what(), "MPI is not initialised") != nullptr) return true;
    std::fprintf(stderr, "unexpected message before MPI_Init: %s\n", e.what());
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const bool refused = refuses_before_init();
  unimem::mpi::environment env(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (env.size() != 2) {
    if (env.rank() == 0) std::printf("unimem_mpi_tests: run with 2 ranks (mpiexec -n 2), not %d\n", env.size());
    return 1;
  }
  ::testing::UnitTest::GetInstance()->listeners().Append(new in_step);
  const int rc = RUN_ALL_TESTS();
  int failed = rc != 0 || !refused ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (env.rank() == 0) {
    std::printf("unimem_mpi_tests: %s (before MPI_Init: %s)\n",
                any == 0 ? "both ranks passed" : "FAILED on a rank",
                refused ? "refused as it should" : "NOT refused");
  }
  return any;
}
