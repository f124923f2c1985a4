#include <stdint.h>
struct block_x {
    uint16_t d;
    uint8_t qs[16];
};
