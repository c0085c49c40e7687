/* A two-rank MPI ping-pong, first checked, then timed.
 * Checked: rank 0 sends a pattern that depends on the size and the round, rank 1 checks every
 * byte and sends back its complement, rank 0 checks that. Exits 1 on the first wrong byte.
 * Timed: as many round trips again with no byte computed or compared between them (rank 1
 * returns what it received, rank 0 sends back what came), so the figure is the transfer's.
 * Computing and comparing the pattern byte by byte costs more than the transfer itself: 3.5 ms
 * per 1 MiB round trip on an idle 2-core machine, more than half of the figure when the checked
 * rounds were the timed ones. Each timed round sends what the one before brought back, so a
 * round that corrupted data carries it to the end, where rank 0 checks the last echo in full.
 * Prints one line per size: the round trips checked and timed, the time per timed round trip
 * and the bandwidth (two messages of `size` bytes per round trip).
 *
 *   mpi_pingpong [ROUNDS_SCALE]   (default 1: 200 rounds of 8 B, 100 of 64 KiB, 20 of 1 MiB,
 *                                  each checked and then timed) */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(size_t size, int round, size_t i) {
  return (unsigned char)((i * 131u + size * 7u + (size_t)round * 29u) >> 3);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) {
    if (rank == 0) fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks, got %d\n", ranks);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  const size_t sizes[] = {8, 65536, 1048576};
  const int rounds[] = {200, 100, 20};
  unsigned char* buf = malloc(1048576);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 2);
  int bad = 0;
  for (int s = 0; s < 3 && !bad; ++s) {
    const size_t size = sizes[s];
    const int n = rounds[s] * (scale > 0 ? scale : 1);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < n && !bad; ++r) {
      if (rank == 0) {
        for (size_t i = 0; i < size; ++i) buf[i] = pattern(size, r, i);
        MPI_Send(buf, (int)size, MPI_BYTE, 1, r, MPI_COMM_WORLD);
        memset(buf, 0, size);
        MPI_Recv(buf, (int)size, MPI_BYTE, 1, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < size; ++i)
          if (buf[i] != (unsigned char)~pattern(size, r, i)) {
            fprintf(stderr, "mpi_pingpong: rank 0: %zu B round %d: byte %zu is 0x%02x, expected 0x%02x\n",
                    size, r, i, buf[i], (unsigned char)~pattern(size, r, i));
            bad = 1;
            break;
          }
      } else {
        MPI_Recv(buf, (int)size, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < size; ++i) {
          if (buf[i] != pattern(size, r, i)) {
            fprintf(stderr, "mpi_pingpong: rank 1: %zu B round %d: byte %zu is 0x%02x, expected 0x%02x\n",
                    size, r, i, buf[i], pattern(size, r, i));
            bad = 1;
            break;
          }
          buf[i] = (unsigned char)~buf[i];
        }
        MPI_Send(buf, (int)size, MPI_BYTE, 0, r, MPI_COMM_WORLD);
      }
    }
    if (bad) break;
    /* Timed: the pattern of round 0 goes back and forth, untouched. */
    if (rank == 0)
      for (size_t i = 0; i < size; ++i) buf[i] = pattern(size, 0, i);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int r = 0; r < n; ++r) {
      if (rank == 0) {
        MPI_Send(buf, (int)size, MPI_BYTE, 1, r, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)size, MPI_BYTE, 1, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, (int)size, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)size, MPI_BYTE, 0, r, MPI_COMM_WORLD);
      }
    }
    const double dt = MPI_Wtime() - t0;
    if (rank == 0) {
      for (size_t i = 0; i < size && !bad; ++i)
        if (buf[i] != pattern(size, 0, i)) {
          fprintf(
              stderr,
              "mpi_pingpong: rank 0: %zu B: after %d timed round trips byte %zu is 0x%02x, expected 0x%02x\n",
              size, n, i, buf[i], pattern(size, 0, i));
          bad = 1;
        }
      if (!bad)
        printf("mpi_pingpong: %zu B: %d round trips checked, %d timed: %.1f us per round trip, %.1f MB/s\n",
               size, n, n, dt / n * 1e6, 2.0 * (double)size * n / dt / 1e6);
    }
  }
  free(buf);
  if (bad) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
  return 0;
}
