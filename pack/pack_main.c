/* Placeholder until the writer lands (issue 4). */
#include <stdio.h>
#include "pack.h"

int pack_main(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "quash: pack is not built yet\n");
	return 1;
}
