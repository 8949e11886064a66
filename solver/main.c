#include <stdio.h>
#include "tsr_version.h"
int main(void) { printf("tessera %s\n", TSR_VERSION); return 0; }
