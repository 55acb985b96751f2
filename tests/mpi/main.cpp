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

/// Before MPI_Init and after MPI_Finalize, unimem::mpi refuses to communicate with a clear
/// error (after: though the calls between asked MPI only once).
bool refuses(const char* when) {
  try {
    std::vector<int> v(1);
    unimem::mpi::send(v, 0, 0);
  } catch (const unimem::argument_error& e) {
    if (std::strstr(e.what(), "MPI is not initialised") != nullptr) return true;
    std::fprintf(stderr, "unexpected message %s: %s\n", when, e.what());
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const bool before = refuses("before MPI_Init");
  int any = 1, rank = 0;
  {
    unimem::mpi::environment env(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    rank = env.rank();
    if (env.size() != 2) {
      if (rank == 0) std::printf("unimem_mpi_tests: run with 2 ranks (mpiexec -n 2), not %d\n", env.size());
      return 1;
    }
    ::testing::UnitTest::GetInstance()->listeners().Append(new in_step);
    const int failed = RUN_ALL_TESTS() != 0 || !before ? 1 : 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }  // MPI_Finalize
  const bool after = refuses("after MPI_Finalize");  // this rank's own
  if (rank == 0) {
    std::printf("unimem_mpi_tests: %s (before MPI_Init: %s; after MPI_Finalize: %s)\n",
                any == 0 && after ? "both ranks passed" : "FAILED on a rank",
                before ? "refused as it should" : "NOT refused",
                after ? "refused as it should" : "NOT refused");
  }
  return any != 0 || !after ? 1 : 0;
}
