def get_assert(output, context):
    return context['vars']['word'] in output


def scored(output, context):
    score = min(1.0, len(output) / 12)
    return {'pass': score > 0.5, 'score': score, 'reason': 'length %d' % len(output)}
