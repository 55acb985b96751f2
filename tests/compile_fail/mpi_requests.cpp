// unimem::mpi refuses at compile time what would let MPI use freed memory or reduce a type MPI
// cannot add. Each UNIMEM_CASE must fail to compile with unimem's message; case 0 must compile.
#include <unimem/mpi.hpp>

#include <vector>

struct pair_of_floats {
  float a, b;
};

int main(int argc, char** argv) {
  unimem::mpi::environment env(argc, argv);
  std::vector<int> v(8);
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0  // control: named containers, temporary views, blocking calls on temporaries
  unimem::mpi::request a = unimem::mpi::isend(v, 0, 0);
  unimem::mpi::request b = unimem::mpi::irecv(unimem::view<int>(v.data(), v.size()), 0, 0);
  unimem::mpi::wait_all(a, b);
  unimem::mpi::send(std::vector<int>(8), MPI_PROC_NULL, 0);
  std::vector<pair_of_floats> p(2);
  unimem::mpi::send(p, MPI_PROC_NULL, 0);
#elif UNIMEM_CASE == 1  // isend of a temporary container
  unimem::mpi::request r = unimem::mpi::isend(std::vector<int>(8), 0, 0);
#elif UNIMEM_CASE == 2  // irecv into a temporary container
  unimem::mpi::request r = unimem::mpi::irecv(std::vector<int>(8), 0, 0);
#elif UNIMEM_CASE == 3  // allreduce of a type without a predefined MPI datatype
  std::vector<pair_of_floats> p(2);
  unimem::mpi::allreduce(p, MPI_SUM);
#endif
  return 0;
}
