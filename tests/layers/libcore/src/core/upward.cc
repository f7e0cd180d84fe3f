// A core file that reaches up into the IR: the layer check must refuse it.
#include "pd/ir/program.h"
