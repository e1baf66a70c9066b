#include "cli/hook_main.h"

int main(int argc, char** argv) { return phoenix::cli::phoenix_hook_main(argc, argv); }
