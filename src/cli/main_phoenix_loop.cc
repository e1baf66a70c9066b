#include "cli/app.h"

int main(int argc, char** argv) { return phoenix::cli::phoenix_loop_main(argc, argv); }
