// Neural-network kernels (softmax, losses, convolution lowering, pooling).
