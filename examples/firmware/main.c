/* Classifies two held-out 8x8 digits (examples/digits_heldout.npz) with the mcugen bundle. */
#include <stdio.h>

#include "digits.h"

/* Pixel values 0..16 (scikit-learn digits); the model takes pixel / 16. */
static const unsigned char samples[2][DIGITS_INPUT_SIZE] = {
    {0, 0, 6, 14, 16, 6, 0, 0, 0, 6, 16, 16, 8, 15, 0, 0, 0, 7, 14, 14, 12, 14, 0, 0,
     0, 0, 13, 10, 16, 6, 0, 0, 0, 0, 4, 16, 10, 0, 0, 0, 0, 0, 11, 13, 16, 2, 0, 0,
     0, 0, 15, 5, 15, 4, 0, 0, 0, 0, 8, 16, 15, 1, 0, 0},
    {0, 2, 9, 15, 16, 15, 2, 0, 0, 11, 11, 5, 9, 16, 3, 0, 0, 0, 0, 0, 9, 12, 0, 0,
     0, 0, 0, 0, 6, 15, 1, 0, 0, 0, 0, 0, 0, 14, 9, 0, 0, 0, 0, 0, 0, 12, 12, 0,
     0, 0, 5, 3, 6, 15, 7, 0, 0, 0, 12, 16, 15, 9, 1, 0},
};
static const int labels[2] = {8, 3};

int main(void)
{
    float x[DIGITS_INPUT_SIZE], logits[DIGITS_OUTPUT_SIZE];
    int wrong = 0;

    if (digits_init() != DIGITS_OK) {
        return 2;
    }
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < DIGITS_INPUT_SIZE; i++) {
            x[i] = (float)samples[s][i] / 16.0f;
        }
        if (digits_run_f32(x, logits) != DIGITS_OK) {
            return 2;
        }
        int best = 0;
        for (int k = 1; k < DIGITS_OUTPUT_SIZE; k++) {
            if (logits[k] > logits[best]) {
                best = k;
            }
        }
        printf("sample %d: predicted %d (label %d)\n", s, best, labels[s]);
        wrong += best != labels[s];
    }
    return wrong;
}
