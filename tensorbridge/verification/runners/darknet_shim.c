/* What tensorbridge's Darknet runner needs from libdarknet beyond its public functions: the number of layers
   and each layer's output buffer, which live in structs a ctypes caller cannot lay out portably. */
#include <darknet.h>

network *tb_load(char *cfg, char *weights)
{
    network *net = load_network(cfg, weights, 0);
    set_batch_network(net, 1);
    return net;
}

float *tb_predict(network *net, float *input) { return network_predict(net, input); }

int tb_layers(network *net) { return net->n; }

int tb_layer_size(network *net, int i) { return net->layers[i].outputs; }

float *tb_layer_output(network *net, int i) { return net->layers[i].output; }
