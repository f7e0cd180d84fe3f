// Network -> Program: traces one eval-mode forward pass of a pd-train network into the static graph that
// model files store and the executor runs.
//
//   pd::ir::Program p = pd::model::to_program(net);   // inputs with batch -1, output named after the loss input
//   pd::io::save_program("model.pdmodel", p);
#pragma once
#include "pd/ir/program.h"
#include "pd/model/network.h"

namespace pd::model {

// Runs net.forward on a dummy batch of 2 in eval mode without autograd, recording every top-level op
// call. Network parameters become Program params under their names; the feature inputs become program
// inputs with a batch extent of -1; the layer the loss reads (net.output_name()) becomes the output
// of that name. Types are inferred again from the -1 batch, so the program runs at any batch size.
ir::Program to_program(Network& net);

}  // namespace pd::model
