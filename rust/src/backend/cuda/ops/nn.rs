//! Device softmax, losses, convolution and pooling.
