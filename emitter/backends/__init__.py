"""Stage 5, the backend: whose kernel runs each layer, mcugen's (portable) or CMSIS-NN's.

In: the prepared IR Graph (every layer's `Prepared` call record of an mcugen kernel), the board,
the backend asked for and the user's CMSIS-NN tree.
Out: the same records, a layer re-expressed as the bit-exact CMSIS-NN call where CMSIS-NN is faster
on that shape (cmsis_nn.py dispatches to each twin's to_cmsis(); kernel_choice.py ranks the
candidates by executed instructions from the committed cost tables, cost_cases.py names the cases);
cmsis_version.py reads and checks the user's CMSIS-NN version.
Next: emitter/plan/ sizes each layer's scratch and places every buffer in the arena.
"""
